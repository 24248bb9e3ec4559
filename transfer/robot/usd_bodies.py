"""What a robot's USD authors about its bodies that a run checks before any engine starts: :func:`authored_mass`."""

from __future__ import annotations

import os

from transfer.robot.usd import file_stage

__all__ = ["authored_mass"]


def authored_mass(asset: str | os.PathLike, body: str) -> float | None:
    """The mass ``physics:mass`` authors on the body at ``body`` (kg, by the stage's ``kilogramsPerUnit``), or
    ``None`` when none is authored (0 or missing: the engines then compute it from density and colliders)."""
    from pxr import UsdPhysics

    stage = file_stage(asset)
    prim = stage.GetPrimAtPath(body)
    if not prim.IsValid() or not prim.HasAPI(UsdPhysics.MassAPI):
        return None
    mass = UsdPhysics.MassAPI(prim).GetMassAttr().Get()
    if mass is None or not mass > 0:
        return None
    return float(mass) * (UsdPhysics.GetStageKilogramsPerUnit(stage) or 1.0)
