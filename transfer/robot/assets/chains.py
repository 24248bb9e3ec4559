"""An MJCF body with several joints, as a chain of single joints (applied to every converted MJCF in the cache).

MuJoCo lets one ``<body>`` carry several joints (every humanoid's ``left_hip_x``, ``left_hip_z``, ``left_hip_y``)
and applies them in the order they are written: each joint turns the body about its anchor, in the frame the
joints before it left. ``mujoco-usd-converter`` writes them as several USD joints between the same two bodies,
which no engine builds as MuJoCo does (PhysX keeps the first and leaves the others out as loops; Newton merges
them into one joint named after the first, DoFs ``<first>:0..N-1``).

:func:`split_joint_groups` rewrites each group of N>1 joints between the same two bodies into a chain of N
joints through N-1 intermediate bodies, in the joints' order (the converter writes them in the MJCF's order):

- joint ``k`` goes from frame ``k-1`` (the parent for the first) to frame ``k`` (the child for the last); each
  keeps its prim, name, axis, limits, drive, armature and every other attribute; only ``physics:body0``/
  ``body1`` and the local frames on the new bodies' sides change;
- frame ``k`` (``<child>_<joint k>_frame``, a sibling of the child prim) sits at joint ``k``'s anchor, oriented
  as the child at rest, with :data:`FRAME_MASS` and :data:`FRAME_INERTIA` and no collider;
- the child gets ``physics:filteredPairs`` to the parent: MuJoCo never lets a body touch its parent, and the
  engines, which filter only bodies joined by one joint, would otherwise collide the two.

At rest every frame coincides with the child shifted to its anchor, so the chain's kinematics is MuJoCo's:
child pose = parent * offset * (rotation of joint 1 about its anchor) * ... * (joint N about its anchor).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "CHAIN_VERSION",
    "FRAME_MARK",
    "FRAME_MASS",
    "FRAME_INERTIA",
    "FRAME_SUFFIX",
    "is_chain_frame",
    "split_joint_groups",
]

CHAIN_VERSION = "joint-chains/2"
"""What :func:`split_joint_groups` does, as recorded in the cache key (a change converts every MJCF again)."""
FRAME_MASS = 1.0e-3
"""kg of each intermediate body (MuJoCo's frames are massless; the engines need a rigid body with mass): 1 g, 0.1 %
of a 1 kg link, and at the joint's anchor, so gravity on it makes no torque about its own joint."""
FRAME_INERTIA = 1.0e-6
"""kg m^2 about each axis of an intermediate body (a 1 g sphere of 1.6 cm radius): 1e-4 of a typical 0.01 kg m^2
joint armature, so the DoF's inertia is the child's and the armature's, as in MuJoCo."""
FRAME_SUFFIX = "_frame"
FRAME_MARK = "transfer:jointChainFrame"
"""The ``customData`` key (``True``) on every intermediate body: what the robot profile and users can tell them by."""


def is_chain_frame(prim: Any) -> bool:
    """Whether ``prim`` is an intermediate body :func:`split_joint_groups` wrote."""
    return bool(prim.GetCustomDataByKey(FRAME_MARK))


def split_joint_groups(usd: Path, out: Path) -> list[dict[str, Any]]:
    """Write ``usd`` with its joint groups split into chains (module docstring) to ``out`` and return what was
    split (one ``{"child", "parent", "joints", "frames"}`` per group, prim paths); write nothing and return ``[]``
    when no two joints share their bodies. ``usd`` itself is never changed."""
    from pxr import Sdf, Usd

    layer = Sdf.Layer.OpenAsAnonymous(str(usd))  # a copy: the converter's file (and its registry entry) stay as is
    stage = Usd.Stage.Open(layer)
    done = [_split(stage, parent, child, joints) for parent, child, joints in _groups(stage)]
    if done:
        layer.Export(str(out))
    return done


def _groups(stage: Any) -> list[tuple[Any, Any, list[Any]]]:
    """Each (parent, child, joints) where more than one articulation joint links the same two bodies, joints in
    the stage's order (the converter's, which is the MJCF's)."""
    from pxr import UsdPhysics

    groups: dict[tuple[Any, Any], list[Any]] = {}
    for prim in stage.Traverse():
        if not prim.IsA(UsdPhysics.Joint) or prim.IsA(UsdPhysics.FixedJoint):
            continue
        joint = UsdPhysics.Joint(prim)
        if joint.GetExcludeFromArticulationAttr().Get():
            continue
        body0, body1 = joint.GetBody0Rel().GetTargets(), joint.GetBody1Rel().GetTargets()
        if len(body0) == 1 and len(body1) == 1:
            groups.setdefault((body0[0], body1[0]), []).append(prim)
    return [(parent, child, joints) for (parent, child), joints in groups.items() if len(joints) > 1]


def _split(stage: Any, parent: Any, child: Any, joints: list[Any]) -> dict[str, Any]:
    """Chain ``joints`` (all from ``parent`` to ``child``) through new frames; returns what was done."""
    from pxr import Gf, UsdGeom, UsdPhysics

    child_prim = stage.GetPrimAtPath(child)
    rest = UsdGeom.Xformable(child_prim).GetLocalTransformation()  # in the child's parent prim's frame
    anchors = [Gf.Vec3d(UsdPhysics.Joint(j).GetLocalPos1Attr().Get() or Gf.Vec3f(0.0)) for j in joints]
    pairs = zip(joints[:-1], anchors[:-1], strict=True)  # the last joint ends on the child itself
    frames = [_define_frame(stage, child_prim, joint.GetName(), anchor, rest) for joint, anchor in pairs]
    for k, prim in enumerate(joints):
        joint = UsdPhysics.Joint(prim)
        if k < len(frames):
            joint.GetBody1Rel().SetTargets([frames[k]])
            joint.GetLocalPos1Attr().Set(Gf.Vec3f(0.0))
        if k > 0:
            rot = joint.GetLocalRot1Attr().Get() or Gf.Quatf(1.0)
            joint.GetBody0Rel().SetTargets([frames[k - 1]])
            joint.GetLocalPos0Attr().Set(Gf.Vec3f(anchors[k] - anchors[k - 1]))
            joint.GetLocalRot0Attr().Set(rot)
    UsdPhysics.FilteredPairsAPI.Apply(child_prim).CreateFilteredPairsRel().AddTarget(parent)
    return {
        "parent": str(parent),
        "child": str(child),
        "joints": [str(j.GetPath()) for j in joints],
        "frames": [str(f) for f in frames],
    }


def _define_frame(stage: Any, child: Any, joint: str, anchor: Any, rest: Any) -> Any:
    """A massive-enough rigid body beside ``child``, at ``anchor`` (child coordinates) with the child's rest
    orientation; returns its path. The name is ``<child>_<joint>_frame`` (numbered if taken)."""
    from pxr import Gf, UsdGeom, UsdPhysics

    base = f"{child.GetName()}_{joint}{FRAME_SUFFIX}"
    path, n = child.GetPath().GetParentPath().AppendChild(base), 1
    while stage.GetPrimAtPath(path):
        path, n = child.GetPath().GetParentPath().AppendChild(f"{base}_{n}"), n + 1
    pose = Gf.Matrix4d().SetTranslate(anchor) * rest
    pose = pose.RemoveScaleShear()
    xform = UsdGeom.Xform.Define(stage, path)
    xform.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(pose.ExtractTranslation())
    xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(pose.ExtractRotationQuat()))
    xform.GetPrim().SetCustomDataByKey(FRAME_MARK, True)
    UsdPhysics.RigidBodyAPI.Apply(xform.GetPrim())
    mass = UsdPhysics.MassAPI.Apply(xform.GetPrim())
    mass.CreateMassAttr(FRAME_MASS)
    mass.CreateDiagonalInertiaAttr(Gf.Vec3f(FRAME_INERTIA))
    mass.CreateCenterOfMassAttr(Gf.Vec3f(0.0))
    mass.CreatePrincipalAxesAttr(Gf.Quatf(1.0))
    return path
