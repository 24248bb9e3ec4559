"""The drives a PhysX scene adds where the asset authors none (a joint PhysX would leave limp), and the notes saying so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transfer.orders.graph import JointType


def _drive_instances(joint: Any) -> tuple[str, ...]:
    """The ``PhysicsDriveAPI`` instances that drive ``joint``'s DoFs in PhysX: the angular / linear drive of a
    revolute / prismatic joint and the rotation axes a D6 leaves free (a D6 axis is locked when its limit has
    ``low > high``; PhysX articulations give D6 joints rotational DoFs only, see
    :func:`transfer.orders.physx.physx_dof_names`). None for a spherical joint: ovphysx reads no drive on one
    (measured: ``rotX``/``rotY``/``rotZ``, ``swing1``/``swing2``/``twist`` and ``angular`` drives, authored with
    gains, all leave its DoFs at zero stiffness)."""
    if joint.type is JointType.REVOLUTE:
        return ("angular",)
    if joint.type is JointType.PRISMATIC:
        return ("linear",)
    if joint.type is JointType.D6:
        limits = {axis: (lo, hi) for axis, lo, hi in joint.limits}
        axes = []
        for axis in ("rotX", "rotY", "rotZ"):
            lo, hi = limits.get(axis, (None, None))
            if not (lo is not None and hi is not None and lo > hi):
                axes.append(axis)
        return tuple(axes)
    return ()


def add_missing_drives(stage: Any, graph: Any, max_force: float) -> tuple[list[str], list[str], list[str]]:
    """Give every DoF joint of ``graph`` that lacks a ``PhysicsDriveAPI`` one, in ``stage``'s edit target.

    PhysX builds no drive for a DoF whose joint authors no ``PhysicsDriveAPI``, so neither stiffness nor damping
    written later (at open or through the tensor bindings) would ever move it. Each drive added has stiffness 0 and
    damping 0 (nothing changes until gains are written), type ``force`` and ``maxForce = max_force`` (N·m or N;
    the one drive attribute that is not per degree). Drives the asset authors are left as they are. Joints excluded
    from the articulation or disabled are not DoFs and get nothing; joints inside instanced prims cannot be edited
    and are reported, and so are spherical joints (PhysX drives none).

    Returns ``(added, skipped, undriven)``: ``<joint path>:<instance>`` of every drive added, the instanced joints
    skipped, and the spherical joints PhysX cannot drive.
    """
    from pxr import UsdPhysics

    added: list[str] = []
    skipped: list[str] = []
    undriven: list[str] = []
    for joint in graph.joints:
        if joint.excluded or not joint.enabled:
            continue
        if joint.type is JointType.SPHERICAL:
            undriven.append(joint.path)
            continue
        instances = _drive_instances(joint)
        if not instances:
            continue
        prim = stage.GetPrimAtPath(joint.path)
        missing = [name for name in instances if not prim.HasAPI(UsdPhysics.DriveAPI, name)]
        if not missing:
            continue
        if prim.IsInstanceProxy():
            skipped.append(joint.path)
            continue
        for name in missing:
            drive = UsdPhysics.DriveAPI.Apply(prim, name)
            drive.CreateTypeAttr("force")
            drive.CreateStiffnessAttr(0.0)
            drive.CreateDampingAttr(0.0)
            drive.CreateMaxForceAttr(float(max_force))
            added.append(f"{joint.path}:{name}")
    return added, skipped, undriven


def _drive_notes(added: Sequence[str], skipped: Sequence[str], undriven: Sequence[str], max_force: float) -> list[str]:
    """The notes on what :func:`add_missing_drives` did."""
    notes = []
    if added:
        notes.append(
            f"added {len(added)} drive(s) (stiffness 0, damping 0, max force {max_force:g}) to joints "
            f"that authored none: {', '.join(added)}"
        )
    if skipped:
        notes.append(
            f"could not add drives to joints inside instanced prims (their DoFs ignore gains): {', '.join(skipped)}"
        )
    if undriven:
        notes.append(
            f"PhysX drives no spherical joint; these ignore gains and position targets: {', '.join(undriven)} "
            "(author them as D6 joints to drive them)"
        )
    return notes
