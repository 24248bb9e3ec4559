"""What MuJoCo reads in a robot's MJCF that the other engines will not have: said once per run by the input layer
(:func:`transfer.backends.source_notes`)."""

from __future__ import annotations

from pathlib import Path

import mujoco

from transfer.robot.assets.mjcf_checks import names_dynamics

__all__ = ["notes"]


def notes(path: str | Path) -> tuple[str, ...]:
    """One line naming the MJCF's actuators with activation dynamics (``dyntype`` other than none: a filter, an
    integrator), which MuJoCo steps as authored and PhysX and Newton do not (their drives take the policy's targets
    as they are); ``()`` when there are none, or for a file MuJoCo refuses (said where it is compiled)."""
    if not names_dynamics(path):  # the text names no activation dynamics anywhere (an actuator or a default)
        return ()  # nothing to ask MuJoCo (compiling the spec takes ~0.1 s)
    try:
        spec = mujoco.MjSpec.from_file(str(path))
    except Exception:  # noqa: BLE001 - a file MuJoCo refuses: said where it is compiled
        return ()
    none = mujoco.mjtDyn.mjDYN_NONE
    dynamic = [a for a in spec.actuators if a.dyntype != none]
    if not dynamic:
        return ()
    named = [
        f"actuator {a.name!r} (joint {a.target!r}) has activation dynamics "
        f'(dyntype="{a.dyntype.name.removeprefix("mjDYN_").lower()}")'
        for a in dynamic[:3]
    ]
    more = f" (and {len(dynamic) - 3} more actuators)" if len(dynamic) > 3 else ""
    return (
        f"{Path(path).name}: {'; '.join(named)}{more}: MuJoCo steps it as authored, PhysX and Newton drive the "
        "joint without it (the policy's targets reach their drives unfiltered)",
    )
