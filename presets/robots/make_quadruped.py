"""Write ``transfer/data/quadruped.usda``: the project's own demo quadruped (``transfer:quadruped``).

A floating base and four legs of three distinct segments each (hip abduction HAA about x, hip flexion HFE and
knee KFE about y), named as ANYmal's: PhysX lists its joints breadth-first (LF_HAA, LH_HAA, RF_HAA, RH_HAA,
LF_HFE, ...) and Newton depth-first (LF_HAA, LF_HFE, LF_KFE, LH_HAA, ...), so a policy fed the other engine's
order drives a hip with a knee's command. Proportions follow Newton's ``examples/assets/quadruped.urdf`` (0.6 m
body, 0.25 m thigh and shank), with capsule legs and sphere feet, explicit masses and inertias, angular drives,
self-collisions off. Regenerate with ``.venv/bin/python presets/robots/make_quadruped.py``.

It also writes ``transfer/data/quadruped.xml``, the same robot as MJCF (``transfer:quadruped.xml``): the same
bodies, joints, masses, inertias and colliders, the drives as position actuators (kp, kv, force range), for the
MuJoCo backend, which steps a robot's own MJCF.
"""

from __future__ import annotations

import math
from pathlib import Path

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

OUT = Path(__file__).resolve().parents[2] / "transfer" / "data" / "quadruped.usda"
MJCF = OUT.with_suffix(".xml")
LEGS = {"LF": (0.3, 0.12), "LH": (-0.3, 0.12), "RF": (0.3, -0.12), "RH": (-0.3, -0.12)}
THIGH, SHANK = 0.25, 0.25
LIMITS_DEG = {"HAA": (-35.0, 35.0), "HFE": (-85.0, 85.0), "KFE": (-140.0, 0.0)}
STIFFNESS, DAMPING, MAX_FORCE = 40.0, 1.0, 40.0  # N m / rad, N m s / rad, N m


def _body(stage: Usd.Stage, path: str, pos: tuple[float, float, float], mass: float, com: tuple[float, float, float],
          inertia: tuple[float, float, float]) -> Usd.Prim:  # fmt: skip
    xform = UsdGeom.Xform.Define(stage, path)
    xform.AddTranslateOp().Set(Gf.Vec3d(*pos))
    prim = xform.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    mass_api = UsdPhysics.MassAPI.Apply(prim)
    mass_api.CreateMassAttr(mass)
    mass_api.CreateCenterOfMassAttr(Gf.Vec3f(*com))
    mass_api.CreateDiagonalInertiaAttr(Gf.Vec3f(*inertia))
    return prim


def _collider(prim: UsdGeom.Gprim, pos: tuple[float, float, float]) -> None:
    prim.AddTranslateOp().Set(Gf.Vec3d(*pos))
    UsdPhysics.CollisionAPI.Apply(prim.GetPrim())


def _capsule_inertia(mass: float, length: float, radius: float) -> tuple[float, float, float]:
    side = mass * (3 * radius**2 + length**2) / 12
    return (side, side, mass * radius**2 / 2)


def _joint(stage: Usd.Stage, name: str, parent: str, child: str, offset: tuple[float, float, float], axis: str,
           kind: str) -> None:  # fmt: skip
    joint = UsdPhysics.RevoluteJoint.Define(stage, f"/quadruped/joints/{name}")
    joint.CreateBody0Rel().SetTargets([Sdf.Path(parent)])
    joint.CreateBody1Rel().SetTargets([Sdf.Path(child)])
    joint.CreateLocalPos0Attr(Gf.Vec3f(*offset))
    joint.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
    joint.CreateLocalRot0Attr(Gf.Quatf(1, 0, 0, 0))
    joint.CreateLocalRot1Attr(Gf.Quatf(1, 0, 0, 0))
    joint.CreateAxisAttr(axis)
    low, high = LIMITS_DEG[kind]
    joint.CreateLowerLimitAttr(low)
    joint.CreateUpperLimitAttr(high)
    drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular")
    drive.CreateTypeAttr("force")
    drive.CreateStiffnessAttr(STIFFNESS * math.pi / 180)  # USD angular drives: per degree
    drive.CreateDampingAttr(DAMPING * math.pi / 180)
    drive.CreateMaxForceAttr(MAX_FORCE)


def _leg(stage: Usd.Stage, leg: str, x: float, y: float) -> None:
    side = 1.0 if y > 0 else -1.0
    hip, thigh, shank = (f"/quadruped/{leg}_{part}" for part in ("HIP", "THIGH", "SHANK"))
    _body(stage, hip, (x, y, 0.0), 0.6, (0, 0, 0), (4e-4, 4e-4, 4e-4))
    ball = UsdGeom.Sphere.Define(stage, f"{hip}/collision")
    ball.CreateRadiusAttr(0.045)
    _collider(ball, (0, 0, 0))
    knee_y = y + side * 0.06
    _body(stage, thigh, (x, knee_y, 0.0), 1.0, (0, 0, -THIGH / 2), _capsule_inertia(1.0, THIGH, 0.03))
    cap = UsdGeom.Capsule.Define(stage, f"{thigh}/collision")
    cap.CreateAxisAttr("Z"), cap.CreateRadiusAttr(0.03), cap.CreateHeightAttr(THIGH - 0.06)
    _collider(cap, (0, 0, -THIGH / 2))
    _body(stage, shank, (x, knee_y, -THIGH), 0.4, (0, 0, -SHANK * 0.6), _capsule_inertia(0.4, SHANK, 0.02))
    cap = UsdGeom.Capsule.Define(stage, f"{shank}/collision")
    cap.CreateAxisAttr("Z"), cap.CreateRadiusAttr(0.02), cap.CreateHeightAttr(SHANK - 0.06)
    _collider(cap, (0, 0, -SHANK / 2))
    foot = UsdGeom.Sphere.Define(stage, f"{shank}/foot")
    foot.CreateRadiusAttr(0.03)
    _collider(foot, (0, 0, -SHANK))
    _joint(stage, f"{leg}_HAA", "/quadruped/base", hip, (x, y, 0.0), "X", "HAA")
    _joint(stage, f"{leg}_HFE", hip, thigh, (0.0, knee_y - y, 0.0), "Y", "HFE")
    _joint(stage, f"{leg}_KFE", thigh, shank, (0.0, 0.0, -THIGH), "Y", "KFE")


def build(out: Path = OUT) -> Path:
    stage = Usd.Stage.CreateNew(str(out))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    root = UsdGeom.Xform.Define(stage, "/quadruped").GetPrim()
    stage.SetDefaultPrim(root)
    base = _body(stage, "/quadruped/base", (0, 0, 0), 6.0, (0, 0, 0), (0.04, 0.2, 0.22))
    UsdPhysics.ArticulationRootAPI.Apply(base)
    base.AddAppliedSchema("PhysxArticulationAPI")
    base.CreateAttribute("physxArticulation:enabledSelfCollisions", Sdf.ValueTypeNames.Bool).Set(False)
    box = UsdGeom.Cube.Define(stage, "/quadruped/base/collision")
    box.CreateSizeAttr(1.0)
    box.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0))
    box.AddScaleOp().Set(Gf.Vec3f(0.7, 0.22, 0.12))
    UsdPhysics.CollisionAPI.Apply(box.GetPrim())
    UsdGeom.Scope.Define(stage, "/quadruped/joints")
    for leg, (x, y) in LEGS.items():
        _leg(stage, leg, x, y)
    stage.GetRootLayer().Save()
    return out


def _mjcf_leg(leg: str, x: float, y: float) -> str:
    side = 1.0 if y > 0 else -1.0
    knee = side * 0.06
    lo = {k: v[0] for k, v in LIMITS_DEG.items()}
    hi = {k: v[1] for k, v in LIMITS_DEG.items()}
    thigh_i = " ".join(f"{v:.6g}" for v in _capsule_inertia(1.0, THIGH, 0.03))
    shank_i = " ".join(f"{v:.6g}" for v in _capsule_inertia(0.4, SHANK, 0.02))
    cap = f"0 0 -0.03 0 0 -{THIGH - 0.03:g}"
    return f"""
      <body name="{leg}_HIP" pos="{x:g} {y:g} 0">
        <joint name="{leg}_HAA" axis="1 0 0" range="{lo['HAA']:g} {hi['HAA']:g}"/>
        <inertial pos="0 0 0" mass="0.6" diaginertia="4e-4 4e-4 4e-4"/>
        <geom name="{leg}_HIP_collision" type="sphere" size="0.045"/>
        <body name="{leg}_THIGH" pos="0 {knee:g} 0">
          <joint name="{leg}_HFE" axis="0 1 0" range="{lo['HFE']:g} {hi['HFE']:g}"/>
          <inertial pos="0 0 {-THIGH / 2:g}" mass="1" diaginertia="{thigh_i}"/>
          <geom name="{leg}_THIGH_collision" type="capsule" size="0.03" fromto="{cap}"/>
          <body name="{leg}_SHANK" pos="0 0 {-THIGH:g}">
            <joint name="{leg}_KFE" axis="0 1 0" range="{lo['KFE']:g} {hi['KFE']:g}"/>
            <inertial pos="0 0 {-SHANK * 0.6:g}" mass="0.4" diaginertia="{shank_i}"/>
            <geom name="{leg}_SHANK_collision" type="capsule" size="0.02" fromto="{cap}"/>
            <geom name="{leg}_foot" type="sphere" size="0.03" pos="0 0 {-SHANK:g}"/>
          </body>
        </body>
      </body>"""


def build_mjcf(out: Path = MJCF) -> Path:
    """The same robot as MJCF: every geom collides with the world, none with another of the robot's."""
    legs = "".join(_mjcf_leg(leg, x, y) for leg, (x, y) in LEGS.items())
    joints = [f"{leg}_{kind}" for leg in LEGS for kind in ("HAA", "HFE", "KFE")]
    actuators = "".join(f"""
    <position name="{j}" joint="{j}" kp="{STIFFNESS:g}" kv="{DAMPING:g}" forcerange="-{MAX_FORCE:g} {MAX_FORCE:g}"/>"""
                        for j in joints)  # fmt: skip
    out.write_text(f"""<!-- Written by presets/robots/make_quadruped.py: the demo quadruped of quadruped.usda as MJCF. -->
<mujoco model="quadruped">
  <compiler angle="degree" autolimits="true"/>
  <option timestep="0.005"/>
  <default>
    <geom contype="1" conaffinity="0"/>
    <joint type="hinge" damping="0"/>
  </default>
  <worldbody>
    <body name="base" pos="0 0 0.5">
      <freejoint name="root_joint"/>
      <inertial pos="0 0 0" mass="6" diaginertia="0.04 0.2 0.22"/>
      <geom name="base_collision" type="box" size="0.35 0.11 0.06"/>{legs}
    </body>
  </worldbody>
  <actuator>{actuators}
  </actuator>
</mujoco>
""")
    return out


if __name__ == "__main__":
    print(build())
    print(build_mjcf())
